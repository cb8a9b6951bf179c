//! The sampler: reads `<proc>/diskstats` once per tick and turns counter
//! differences into iostat -x statistics, and keeps what it knows about each
//! device cached by what changes how often:
//!
//! - identity and hardware facts (model, ids, rotational, holders, queue
//!   depth) are read once per `diskseq`: again only when the device is
//!   replaced (a loop device re-attached);
//! - queue settings are re-read after blktune changes them, when a uevent
//!   names the device, and on a slow round-robin of a few devices per tick,
//!   so that a change made by someone else shows within [`SETTINGS_REFRESH`];
//! - `size` is read when hot-plug may have changed it.
//!
//! Hot-plug is heard on the kernel's uevent socket ([`crate::uevent`]); where
//! it cannot be opened, each tick compares the names in diskstats and every
//! device's `size` instead. Reading queue attributes of many devices costs far
//! more than diskstats (about 18 ms against 0.2 ms for 200 devices), which is
//! why none of them is read every tick.

use crate::device::{BlockDevice, Identity, QueueSettings};
use crate::diskstats::{self, Counters, DiskStatsLine};
use crate::host::CpuTimes;
use crate::iostat::{self, ExtStats, NoData};
use crate::os::{DeviceName, SysRoot};
use crate::uevent::{Action, Uevent, UeventSocket};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Every device's queue settings are checked again within this time.
pub const SETTINGS_REFRESH: Duration = Duration::from_secs(5);

/// Devices read in full before a screen's first snapshot: more rows than a
/// terminal shows ([`SamplerOptions::screen`]).
pub const FIRST_ROWS: usize = 64;

/// Devices whose identity is filled in per tick after the first ones.
const FILL_PER_TICK: usize = 128;

/// Devices re-read per tick for hot-plug; the rest wait for the next tick
/// (a storm of a thousand attaches is spread, never a stall).
const HOTPLUG_PER_TICK: usize = 1024;

/// Events kept from one drain of the uevent socket; more is a rescan.
const EVENTS_PER_TICK: usize = 4096;

/// The round-robin reads every device's scheduler line once per
/// [`SETTINGS_REFRESH`], and the rest of the settings (nr_requests,
/// read_ahead_kb, tunables) of this many devices per period: all of them on
/// every check up to this many devices, on every `n / FULL_PER_PERIOD`-th
/// check beyond (or at once when the scheduler moved). Keeps a thousand idle
/// devices under 0.5% of a core.
const FULL_PER_PERIOD: u32 = 200;

/// ... but every device's full settings at least once per this many periods.
const SETTINGS_EVERY: u32 = 6;

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
        // The sampler publishes devices sorted by name: a binary search,
        // and a plain search for lists built otherwise (replay, tests).
        match self.devices.binary_search_by(|d| d.name.as_str().cmp(name)) {
            Ok(i) => self.devices.get(i),
            Err(_) => self.devices.iter().find(|d| d.name == name),
        }
    }
}

/// What a [`Sampler`] reads besides diskstats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerOptions {
    /// Only these whole devices (`blktune watch sda`); `None`: every one.
    pub only: Option<Vec<String>>,
    /// Read identity (model, ids, holders, queue depth) and tunables, as the
    /// TUI and recordings need; `false` reads only `size` and the settings a
    /// row shows (scheduler, nr_requests, read_ahead_kb), as `watch` needs.
    pub identity: bool,
    /// How hot-plug is heard.
    pub hotplug: HotPlug,
    /// With `identity`: read only this many rows in full before the first
    /// snapshot (in the order a table shows them) and the rest over the next
    /// ticks, [`FILL_PER_TICK`] at a time; `None` reads every one at once
    /// (recordings, whose first facts must be whole).
    pub first_rows: Option<usize>,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        Self {
            only: None,
            identity: true,
            hotplug: HotPlug::Auto,
            first_rows: None,
        }
    }
}

impl SamplerOptions {
    /// For a screen: everything, but first the rows it can show.
    pub fn screen() -> Self {
        Self {
            first_rows: Some(FIRST_ROWS),
            ..Self::default()
        }
    }
}

/// How the sampler learns that a device came, went or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotPlug {
    /// The uevent socket on the real machine, [`HotPlug::Poll`] on a fake
    /// tree or where the socket cannot be opened.
    Auto,
    /// Compare diskstats names and every device's `size` each tick.
    Poll,
    /// Only events given to [`Sampler::push_uevent`] (tests, benchmarks).
    Manual,
}

/// Where events come from.
#[derive(Debug)]
enum Events {
    Socket(UeventSocket),
    Poll,
    Manual(Vec<Uevent>),
}

/// One device as the sampler keeps it.
#[derive(Debug)]
struct Entry {
    dev: DeviceName,
    info: BlockDevice,
    /// The `diskseq` its identity was read for; `None`: not read yet.
    identity_for: Option<Option<u64>>,
    /// When the round-robin looks at it next.
    next_check: Instant,
    /// Round-robin checks since its settings were last read in full.
    checks: u32,
}

/// Live sampler over a [`SysRoot`].
#[derive(Debug)]
pub struct Sampler {
    root: SysRoot,
    opts: SamplerOptions,
    start: Instant,
    rates: RateTracker,
    entries: BTreeMap<String, Entry>,
    devices: Arc<Vec<BlockDevice>>,
    /// Diskstats names of the last tick: a change means a rescan.
    names: BTreeSet<String>,
    refresh_every: Duration,
    /// Re-read every device's settings on the next tick.
    dirty_all: bool,
    /// Re-read these devices' settings on the next tick.
    dirty: BTreeSet<String>,
    /// Named by hot-plug: re-read size, diskseq and, if new, everything.
    pending: BTreeSet<String>,
    /// The kernel dropped events: re-list `<sysfs>/block` and look at every
    /// device again on the next tick.
    rescan: bool,
    /// Devices whose identity is still to be read, in row order.
    fill: VecDeque<String>,
    events: Events,
    /// Why hot-plug is polled, for `BLKTUNE_DEBUG` output.
    note: Option<String>,
    /// The snapshot taken by [`Sampler::new`], until someone takes it.
    baseline: Option<Snapshot>,
    text: String,
    cpu: Option<CpuTimes>,
}

impl Sampler {
    /// Discover devices and take the baseline sample, so the first [`tick`]
    /// reports a real interval.
    ///
    /// [`tick`]: Sampler::tick
    pub fn new(root: SysRoot) -> io::Result<Self> {
        Self::with_options(root, SamplerOptions::default())
    }

    /// [`Sampler::new`] reading only what `opts` asks for.
    pub fn with_options(root: SysRoot, opts: SamplerOptions) -> io::Result<Self> {
        let now = Instant::now();
        let (events, note) = match opts.hotplug {
            HotPlug::Manual => (Events::Manual(Vec::new()), None),
            HotPlug::Poll => (Events::Poll, Some("hot-plug: polling (asked for)".into())),
            HotPlug::Auto if !root.is_live() => (
                Events::Poll,
                Some("hot-plug: polling (a fake tree has no uevents)".into()),
            ),
            HotPlug::Auto => match UeventSocket::open() {
                Ok(s) => (Events::Socket(s), None),
                Err(e) => (
                    Events::Poll,
                    Some(format!(
                        "hot-plug: polling diskstats and sizes (no uevent socket: {e})"
                    )),
                ),
            },
        };
        let mut s = Self {
            root,
            opts,
            start: now,
            rates: RateTracker::default(),
            entries: BTreeMap::new(),
            devices: Arc::new(Vec::new()),
            names: BTreeSet::new(),
            refresh_every: SETTINGS_REFRESH,
            dirty_all: false,
            dirty: BTreeSet::new(),
            pending: BTreeSet::new(),
            rescan: false,
            fill: VecDeque::new(),
            events,
            note,
            baseline: None,
            text: String::new(),
            cpu: None,
        };
        s.discover()?;
        // Nothing more is read before the first frame: the rest of the
        // identities wait for the ticks.
        let first = s.sample(false)?;
        s.baseline = Some(first);
        Ok(s)
    }

    /// Read the devices in scope: every `size`, then the rows that show.
    fn discover(&mut self) -> io::Result<()> {
        let now = Instant::now();
        let names: Vec<DeviceName> = self
            .root
            .block_names()?
            .into_iter()
            .filter(|d| self.in_scope(d.as_str()))
            .collect();
        // Every size in one read where the kernel offers it; the exact
        // `size` comes with the identity.
        let sizes = self.root.read_partition_sizes();
        let mut shown = Vec::new();
        for dev in names {
            let mut info = BlockDevice::unread(dev.as_str());
            match &sizes {
                Some(m) => info.size_bytes = m.get(dev.as_str()).copied().unwrap_or(0),
                None => info.read_size(&self.root, &dev),
            }
            if info.size_bytes > 0 {
                shown.push(dev.as_str().to_owned());
            }
            let name = dev.as_str().to_owned();
            self.entries.insert(
                name,
                Entry {
                    dev,
                    info,
                    identity_for: None,
                    next_check: now,
                    checks: 0,
                },
            );
        }
        // Rows in the order a table shows them first (loop2 before loop10).
        shown.sort_by(|a, b| natural_cmp(a, b));
        let n = shown.len().max(1) as u32;
        for (i, name) in shown.iter().enumerate() {
            let full_now = !self.opts.identity || self.opts.first_rows.is_none_or(|f| i < f);
            if let Some(e) = self.entries.get_mut(name) {
                // Spread the round-robin over one period.
                e.next_check = now + self.refresh_every * (i as u32 + 1) / n;
                if full_now {
                    read_entry(&self.root, e, self.opts.identity);
                }
            }
            if !full_now {
                self.fill.push_back(name.clone());
            }
        }
        self.publish();
        Ok(())
    }

    /// Is this whole device one the caller wants?
    fn in_scope(&self, name: &str) -> bool {
        self.opts
            .only
            .as_ref()
            .is_none_or(|only| only.iter().any(|n| n == name))
    }

    /// The root this sampler reads.
    pub fn root(&self) -> &SysRoot {
        &self.root
    }

    /// Ask for every device's settings to be re-read on the next tick
    /// (after blktune changed something).
    pub fn invalidate(&mut self) {
        self.dirty_all = true;
    }

    /// Ask for one device's settings to be re-read on the next tick.
    pub fn invalidate_device(&mut self, name: &str) {
        self.dirty.insert(name.to_owned());
    }

    /// Change the round-robin period: each device's settings are checked
    /// again within it.
    pub fn set_refresh_every(&mut self, every: Duration) {
        let now = Instant::now();
        for e in self.entries.values_mut() {
            e.next_check = e.next_check.min(now + every);
        }
        self.refresh_every = every;
    }

    /// The cached devices.
    pub fn devices(&self) -> &Arc<Vec<BlockDevice>> {
        &self.devices
    }

    /// The sample [`Sampler::new`] took (no rates yet, devices and settings
    /// already read): what a screen can draw at once. `None` once taken.
    pub fn take_baseline(&mut self) -> Option<Snapshot> {
        self.baseline.take()
    }

    /// Read every identity still missing now (before a recording starts,
    /// so that its first facts are whole).
    pub fn complete(&mut self) {
        let mut changed = false;
        while let Some(name) = self.fill.pop_front() {
            if let Some(e) = self.entries.get_mut(&name)
                && e.identity_for.is_none()
                && e.info.size_bytes > 0
            {
                read_entry(&self.root, e, true);
                changed = true;
            }
        }
        if changed {
            self.publish();
        }
    }

    /// Why hot-plug is polled rather than heard (debug output only).
    pub fn hotplug_note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// Hand the sampler a uevent as if the kernel had sent it
    /// ([`HotPlug::Manual`]; ignored otherwise).
    pub fn push_uevent(&mut self, ev: Uevent) {
        if let Events::Manual(v) = &mut self.events {
            v.push(ev);
        }
    }

    /// Take the events that arrived since the last tick.
    fn take_events(&mut self) {
        let (events, overflowed) = match &mut self.events {
            Events::Socket(s) => {
                let d = s.drain(EVENTS_PER_TICK);
                (d.events, d.overflowed)
            }
            Events::Manual(v) => (std::mem::take(v), false),
            Events::Poll => return,
        };
        if overflowed {
            self.rescan = true;
        }
        for ev in events {
            if ev.action == Action::Move {
                self.rescan = true;
                continue;
            }
            if ev.action == Action::Other {
                continue;
            }
            if let Some(disk) = ev.disk()
                && self.in_scope(disk)
            {
                self.pending.insert(disk.to_owned());
            }
        }
    }

    /// Re-list `<sysfs>/block`: new names are pending, gone ones dropped;
    /// with `all` (events were lost) every device is looked at again.
    fn do_rescan(&mut self, all: bool) -> bool {
        let Ok(names) = self.root.block_names() else {
            return false;
        };
        let now: BTreeSet<String> = names
            .into_iter()
            .map(|d| d.as_str().to_owned())
            .filter(|n| self.in_scope(n))
            .collect();
        let before = self.entries.len();
        self.entries.retain(|n, _| now.contains(n));
        let mut changed = self.entries.len() != before;
        for n in now {
            if !self.entries.contains_key(&n) {
                self.pending.insert(n);
                changed = true;
            } else if all {
                self.pending.insert(n);
            }
        }
        changed
    }

    /// Hot-plug named `name`: re-read what may have changed.
    fn reload(&mut self, name: &str, now: Instant) -> bool {
        let Some(dev) = self.root.device(name) else {
            return self.entries.remove(name).is_some();
        };
        let e = self
            .entries
            .entry(name.to_owned())
            .or_insert_with(|| Entry {
                dev,
                info: BlockDevice::unread(name),
                identity_for: None,
                next_check: now + SETTINGS_REFRESH,
                checks: 0,
            });
        let before = e.info.clone();
        e.info.read_size(&self.root, &e.dev);
        if self.opts.identity {
            e.info.read_diskseq(&self.root, &e.dev);
            if e.identity_for != Some(e.info.diskseq) {
                e.identity_for = None;
            }
        }
        if e.info.size_bytes > 0 {
            read_entry(&self.root, e, self.opts.identity);
        }
        e.info != before
    }

    /// Publish the entries as the snapshot's device list (sorted by name).
    fn publish(&mut self) {
        self.devices = Arc::new(self.entries.values().map(|e| e.info.clone()).collect());
    }

    /// Read diskstats (and, when due, device settings) and compute the interval.
    pub fn tick(&mut self) -> io::Result<Snapshot> {
        self.sample(true)
    }

    /// [`Sampler::tick`]; `fill` reads a batch of identities still missing.
    fn sample(&mut self, fill: bool) -> io::Result<Snapshot> {
        self.take_events();
        let mut text = std::mem::take(&mut self.text);
        let read = self.root.read_diskstats_into(&mut text);
        let now = Instant::now();
        let wall = SystemTime::now();
        let t = now.duration_since(self.start).as_secs_f64();
        let parsed = read.map(|()| diskstats::parse(&text));
        self.text = text;
        let (lines, bad) = parsed?;
        let warnings = bad
            .into_iter()
            .map(|(n, e)| format!("diskstats line {n}: {e}"))
            .collect();
        let interval = self.rates.last_interval(t);
        let stats = self.rates.update(t, &lines);

        // A name that came or went in diskstats is hot-plug too (and all
        // there is when events cannot be heard).
        let names_changed =
            stats.len() != self.names.len() || stats.keys().zip(&self.names).any(|(a, b)| a != b);
        if names_changed {
            self.names = stats.keys().cloned().collect();
        }
        let mut changed = false;
        let lost = std::mem::take(&mut self.rescan);
        if names_changed || lost {
            changed |= self.do_rescan(lost);
        }
        if matches!(self.events, Events::Poll) {
            // A loop device attached to an existing node changes its size
            // only: compare every size, from one file where there is one.
            let sizes = self.root.read_partition_sizes();
            for (name, e) in &self.entries {
                let size = match &sizes {
                    Some(m) => m.get(name).copied().unwrap_or(0),
                    None => self.root.read_size_bytes(&e.dev).unwrap_or(0),
                };
                // Exact sizes against 1 KiB blocks: a change means 0 <-> N or
                // more than a block.
                if size.abs_diff(e.info.size_bytes) >= 1024
                    || (size == 0) != (e.info.size_bytes == 0)
                {
                    self.pending.insert(name.clone());
                }
            }
        }
        let pending: Vec<String> = self
            .pending
            .iter()
            .take(HOTPLUG_PER_TICK)
            .cloned()
            .collect();
        for name in &pending {
            self.pending.remove(name);
            changed |= self.reload(name, now);
        }

        // blktune's own changes, then the round-robin.
        let all = std::mem::take(&mut self.dirty_all);
        let dirty = std::mem::take(&mut self.dirty);
        let identity = self.opts.identity;
        let full_every = (self.entries.len() as u32)
            .div_ceil(FULL_PER_PERIOD)
            .clamp(1, SETTINGS_EVERY);
        for (name, e) in &mut self.entries {
            let asked = all || dirty.contains(name);
            let due = e.next_check <= now;
            if !(asked || due) || e.info.size_bytes == 0 {
                continue;
            }
            e.next_check = now + self.refresh_every;
            if asked || e.identity_for.is_none() && identity {
                let before = e.info.queue.clone();
                read_entry(&self.root, e, identity);
                changed |= e.info.queue != before;
                continue;
            }
            // The scheduler line is the cheap sign of someone else's change;
            // everything else is read when it moved, and every few checks.
            e.checks += 1;
            let sched = QueueSettings::read_scheduler(&self.root, &e.dev);
            if sched != e.info.queue.scheduler || e.checks >= full_every {
                let mut q = QueueSettings::read_basic_with(&self.root, &e.dev, sched);
                if identity {
                    q.read_tunables(&self.root, &e.dev);
                }
                changed |= q != e.info.queue;
                e.info.queue = q;
                e.checks = 0;
            }
        }

        // The identity of rows past the first screen, a batch per tick.
        let mut filled = 0;
        while fill && filled < FILL_PER_TICK {
            let Some(name) = self.fill.pop_front() else {
                break;
            };
            if let Some(e) = self.entries.get_mut(&name)
                && e.identity_for.is_none()
                && e.info.size_bytes > 0
            {
                read_entry(&self.root, e, true);
                filled += 1;
                changed = true;
            }
        }
        if changed {
            self.publish();
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
            refreshed: changed,
            stats,
            iowait_pct,
            warnings,
        })
    }
}

/// Read a device's settings, and its identity when wanted and not yet read
/// for its `diskseq`.
fn read_entry(root: &SysRoot, e: &mut Entry, identity: bool) {
    if identity {
        if e.identity_for.is_none() {
            e.info.read_size(root, &e.dev);
            e.info.read_identity(root, &e.dev, Identity::Full);
            e.identity_for = Some(e.info.diskseq);
        }
        e.info.queue = QueueSettings::read(root, &e.dev);
    } else {
        e.info.queue = QueueSettings::read_basic(root, &e.dev);
        let n = &e.info.name;
        if n.starts_with("sd") || n.starts_with("hd") {
            e.info.read_rotational(root, &e.dev);
        }
    }
    e.checks = 0;
}

/// Names in the order people read them: `loop2` before `loop10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let dx = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let dy = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (nx, ny) = (&x[..dx], &y[..dy]);
                let strip = |s: &[u8]| -> usize { s.iter().take_while(|c| **c == b'0').count() };
                let (tx, ty) = (&nx[strip(nx)..], &ny[strip(ny)..]);
                let o = tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty));
                if o != Ordering::Equal {
                    return o;
                }
                (x, y) = (&x[dx..], &y[dy..]);
            }
            (Some(c), Some(d)) if c != d => return c.cmp(d),
            _ => (x, y) = (&x[1..], &y[1..]),
        }
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

        fn manual(t: &FakeTree) -> Sampler {
            let opts = SamplerOptions {
                hotplug: HotPlug::Manual,
                ..SamplerOptions::screen()
            };
            Sampler::with_options(t.root(), opts).unwrap()
        }

        fn change(name: &str, diskseq: u64) -> Uevent {
            let path = format!("/devices/virtual/block/{name}");
            let m = format!(
                "change@{path}\0ACTION=change\0DEVPATH={path}\0SUBSYSTEM=block\0\
                 DEVNAME={name}\0DEVTYPE=disk\0DISKSEQ={diskseq}\0"
            );
            crate::uevent::parse(m.as_bytes()).unwrap()
        }

        fn reads(n: u64) -> Counters {
            Counters {
                rd_ios: n,
                rd_sectors: 8 * n,
                ..Counters::default()
            }
        }

        /// Detached loop devices stay in diskstats and /sys/block with size
        /// 0; an attach changes the size and diskseq, and no name.
        fn detached_loops(t: &FakeTree, n: u32) {
            let mut lines = Vec::new();
            for i in 0..n {
                let name = format!("loop{i}");
                t.add(&FakeDisk::new(&name).dev(7, i).size_bytes(0))
                    .unwrap();
                std::fs::write(t.dev_dir(&name).join("diskseq"), format!("{}\n", 10 + i)).unwrap();
                lines.push((name, i));
            }
            let stats: Vec<_> = lines
                .iter()
                .map(|(n, i)| (n.as_str(), 7, *i, Counters::default()))
                .collect();
            t.set_diskstats(&stats).unwrap();
        }

        fn attach(t: &FakeTree, name: &str, diskseq: u64) {
            std::fs::write(t.dev_dir(name).join("size"), "2048\n").unwrap();
            std::fs::write(t.dev_dir(name).join("diskseq"), format!("{diskseq}\n")).unwrap();
        }

        #[test]
        fn a_loop_attached_to_an_existing_node_shows_at_the_next_tick_with_rates() {
            let dir = tempfile::tempdir().unwrap();
            let t = FakeTree::new(dir.path()).unwrap();
            detached_loops(&t, 2);
            let mut s = manual(&t);
            s.set_refresh_every(Duration::from_secs(3600));
            assert_eq!(s.tick().unwrap().device("loop1").unwrap().size_bytes, 0);
            attach(&t, "loop1", 99);
            s.push_uevent(change("loop1", 99));
            t.set_diskstats(&[
                ("loop0", 7, 0, Counters::default()),
                ("loop1", 7, 1, reads(500)),
            ])
            .unwrap();
            let snap = s.tick().unwrap();
            assert!(snap.refreshed);
            let d = snap.device("loop1").unwrap();
            assert_eq!(d.size_bytes, 2048 * 512);
            assert_eq!(d.diskseq, Some(99));
            assert_eq!(d.queue.active_label(), "mq-deadline");
            let itv = snap.interval.unwrap();
            let r_s = snap.ext("loop1").unwrap().r_s;
            assert!((r_s * itv - 500.0).abs() < 1e-6, "{r_s} over {itv}");
        }

        #[test]
        fn without_an_event_a_heard_sampler_waits_but_a_polling_one_sees_the_size() {
            let dir = tempfile::tempdir().unwrap();
            let t = FakeTree::new(dir.path()).unwrap();
            detached_loops(&t, 1);
            let mut heard = manual(&t);
            heard.set_refresh_every(Duration::from_secs(3600));
            let opts = SamplerOptions {
                hotplug: HotPlug::Poll,
                ..SamplerOptions::default()
            };
            let mut polled = Sampler::with_options(t.root(), opts).unwrap();
            assert!(polled.hotplug_note().is_some());
            attach(&t, "loop0", 42);
            assert_eq!(heard.tick().unwrap().device("loop0").unwrap().size_bytes, 0);
            let snap = polled.tick().unwrap();
            assert_eq!(snap.device("loop0").unwrap().size_bytes, 2048 * 512);
            assert_eq!(snap.device("loop0").unwrap().diskseq, Some(42));
        }

        #[test]
        fn a_storm_of_attaches_is_read_in_one_tick() {
            let dir = tempfile::tempdir().unwrap();
            let t = FakeTree::new(dir.path()).unwrap();
            detached_loops(&t, 1000);
            let mut s = manual(&t);
            for i in 0..1000 {
                attach(&t, &format!("loop{i}"), 5000 + i);
                s.push_uevent(change(&format!("loop{i}"), 5000 + i));
            }
            let snap = s.tick().unwrap();
            assert!(snap.devices.iter().all(|d| d.size_bytes > 0));
            assert!(snap.devices.iter().all(|d| d.queue.has_scheduler()));
        }

        #[test]
        fn events_for_vanished_or_unknown_devices_are_harmless() {
            let (_d, t) = tree();
            let mut s = manual(&t);
            t.add(&FakeDisk::new("sdb").dev(8, 16)).unwrap();
            t.remove("sdb").unwrap();
            s.push_uevent(change("sdb", 1)); // gone between the event and the read
            s.push_uevent(change("sdz", 2)); // never there
            let path = "/devices/virtual/net/lo";
            let net = format!("add@{path}\0ACTION=add\0DEVPATH={path}\0SUBSYSTEM=net\0");
            s.push_uevent(crate::uevent::parse(net.as_bytes()).unwrap());
            std::fs::write(t.dev_dir("sda").join("size"), "garbage\n").unwrap();
            s.push_uevent(change("sda", 1)); // an unreadable size is 0, not a panic
            let snap = s.tick().unwrap();
            assert!(snap.device("sdb").is_none() && snap.device("sdz").is_none());
            assert_eq!(snap.device("sda").unwrap().size_bytes, 0);
        }

        #[test]
        fn identity_is_read_once_per_diskseq() {
            let dir = tempfile::tempdir().unwrap();
            let t = FakeTree::new(dir.path()).unwrap();
            detached_loops(&t, 1);
            attach(&t, "loop0", 7);
            let mut s = manual(&t);
            let model = t.dev_dir("loop0").join("device/model");
            std::fs::create_dir_all(model.parent().unwrap()).unwrap();
            std::fs::write(&model, "second\n").unwrap();
            s.push_uevent(change("loop0", 7));
            let snap = s.tick().unwrap();
            assert_eq!(snap.device("loop0").unwrap().model, None, "same diskseq");
            attach(&t, "loop0", 8);
            s.push_uevent(change("loop0", 8));
            let snap = s.tick().unwrap();
            assert_eq!(
                snap.device("loop0").unwrap().model.as_deref(),
                Some("second")
            );
        }

        #[test]
        fn rows_past_the_first_screen_are_filled_over_the_first_ticks() {
            let dir = tempfile::tempdir().unwrap();
            let t = FakeTree::new(dir.path()).unwrap();
            for i in 0..300 {
                t.add(
                    &FakeDisk::new(&format!("loop{i}"))
                        .dev(7, i)
                        .hw_queue_depth(128),
                )
                .unwrap();
            }
            t.set_diskstats(&[]).unwrap();
            let mut s = manual(&t);
            let first = s.take_baseline().unwrap();
            assert!(s.take_baseline().is_none());
            let read = |snap: &Snapshot| {
                snap.devices
                    .iter()
                    .filter(|d| d.hw_queue_depth.is_some())
                    .count()
            };
            assert_eq!(read(&first), FIRST_ROWS);
            // The rows a table shows first: loop0..loop63 in natural order.
            assert!(first.device("loop63").unwrap().hw_queue_depth.is_some());
            assert!(first.device("loop64").unwrap().hw_queue_depth.is_none());
            let mut snap = s.tick().unwrap();
            for _ in 0..3 {
                snap = s.tick().unwrap();
            }
            assert_eq!(read(&snap), 300);
            // Without a screen (a recording) every row is read at once.
            let mut whole = Sampler::with_options(
                t.root(),
                SamplerOptions {
                    hotplug: HotPlug::Manual,
                    ..SamplerOptions::default()
                },
            )
            .unwrap();
            assert_eq!(read(&whole.take_baseline().unwrap()), 300);
            let mut lazy = manual(&t);
            lazy.complete();
            assert_eq!(
                lazy.devices()
                    .iter()
                    .filter(|d| d.hw_queue_depth.is_some())
                    .count(),
                300
            );
        }

        #[test]
        fn a_scheduler_changed_behind_its_back_shows_within_the_period() {
            let (_d, t) = tree();
            let mut s = manual(&t);
            s.set_refresh_every(Duration::from_millis(50));
            std::fs::write(t.dev_dir("sda").join("queue/scheduler"), "kyber\n").unwrap();
            t.settle("sda", &["none", "mq-deadline", "kyber", "bfq"], 256)
                .unwrap();
            std::thread::sleep(Duration::from_millis(60));
            let snap = s.tick().unwrap();
            let q = &snap.device("sda").unwrap().queue;
            assert_eq!(q.active_label(), "kyber");
            assert!(q.tunables.contains_key("read_lat_nsec"), "{:?}", q.tunables);
        }

        #[test]
        fn a_named_device_is_all_that_is_read() {
            let (_d, t) = tree();
            t.add(&FakeDisk::new("sdb").dev(8, 16)).unwrap();
            let opts = SamplerOptions {
                only: Some(vec!["sdb".into()]),
                identity: false,
                hotplug: HotPlug::Manual,
                first_rows: None,
            };
            let mut s = Sampler::with_options(t.root(), opts).unwrap();
            let snap = s.tick().unwrap();
            assert_eq!(snap.devices.len(), 1);
            let d = snap.device("sdb").unwrap();
            assert_eq!(d.queue.nr_requests, Some(256));
            assert_eq!(d.hw_queue_depth, None, "no identity for watch");
            assert!(d.queue.tunables.is_empty(), "no tunables for watch");
        }

        #[test]
        fn natural_order() {
            let mut v = ["loop10", "loop2", "sda", "loop1", "nvme10n1", "nvme2n1"];
            v.sort_by(|a, b| natural_cmp(a, b));
            assert_eq!(
                v,
                ["loop1", "loop2", "loop10", "nvme2n1", "nvme10n1", "sda"]
            );
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
