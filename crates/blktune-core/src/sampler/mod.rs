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

use crate::device::{BlockDevice, Identity, QueueSettings, SchedulerRead};
use crate::diskstats::{self, Counters, DiskStatsLine, InFlight};
use crate::host::CpuTimes;
use crate::iostat::{self, ExtStats, NoData};
use crate::natural::natural_cmp;
use crate::os::{DeviceName, OpenAttr, SysRoot, spare_descriptors};
use crate::uevent::{Action, Uevent, UeventSocket};
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
const FILL_PER_TICK: usize = 256;

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

/// With rows in view ([`Sampler::set_in_view`]), the others are checked
/// this many times less often, and only their scheduler line (the rest
/// when it moved); a row that comes into view is checked a period after its
/// last check (at once when that is past), in full.
const OFF_VIEW_EVERY: u32 = 6;

/// One device's numbers for one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceStat {
    pub counters: Counters,
    /// I/Os in flight now, reads and writes; `None` where the split is not
    /// known (a replay: recordings keep diskstats' total; a partition; an
    /// unreadable file). Read only where diskstats counts any in flight.
    pub in_flight: Option<InFlight>,
    /// `Err` when this interval has no data (first sample, reset counters).
    pub stats: Result<ExtStats, NoData>,
}

impl DeviceStat {
    /// A line's counters and the interval's rates; the in-flight split is
    /// the sampler's to read.
    pub fn new(counters: Counters, stats: Result<ExtStats, NoData>) -> Self {
        Self {
            counters,
            in_flight: None,
            stats,
        }
    }
}

/// Every diskstats line's numbers by device name, in name (byte) order.
///
/// A sorted vector rather than a map: the rate tracker makes one per tick
/// already in that order (no tree to build and no nodes to free, at a
/// thousand lines a tick), and a lookup is a binary search.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceStats(Vec<(String, DeviceStat)>);

impl DeviceStats {
    /// From entries already in name order, each name once.
    fn from_sorted(v: Vec<(String, DeviceStat)>) -> Self {
        debug_assert!(v.windows(2).all(|w| w[0].0 < w[1].0));
        Self(v)
    }

    fn at(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    /// A device's numbers.
    pub fn get(&self, name: &str) -> Option<&DeviceStat> {
        let i = self.at(name).ok()?;
        self.0.get(i).map(|(_, st)| st)
    }

    /// A device's numbers, to change.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut DeviceStat> {
        let i = self.at(name).ok()?;
        self.0.get_mut(i).map(|(_, st)| st)
    }

    /// Has this device a line?
    pub fn contains_key(&self, name: &str) -> bool {
        self.at(name).is_ok()
    }

    /// Take a device's numbers out.
    pub fn remove(&mut self, name: &str) -> Option<DeviceStat> {
        let i = self.at(name).ok()?;
        Some(self.0.remove(i).1)
    }

    /// Forget every line.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Names and numbers, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &DeviceStat)> {
        self.0.iter().map(|(n, st)| (n, st))
    }

    /// Names and numbers to change, in name order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut DeviceStat)> {
        self.0.iter_mut().map(|(n, st)| (&*n, st))
    }
}

impl<'a> IntoIterator for &'a DeviceStats {
    type Item = (&'a String, &'a DeviceStat);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, DeviceStat)>,
        fn(&'a (String, DeviceStat)) -> (&'a String, &'a DeviceStat),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(n, st)| (n, st))
    }
}

impl IntoIterator for DeviceStats {
    type Item = (String, DeviceStat);
    type IntoIter = std::vec::IntoIter<(String, DeviceStat)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// As a map would: a name given twice keeps its last numbers.
impl FromIterator<(String, DeviceStat)> for DeviceStats {
    fn from_iter<I: IntoIterator<Item = (String, DeviceStat)>>(iter: I) -> Self {
        let map: BTreeMap<String, DeviceStat> = iter.into_iter().collect();
        Self::from_sorted(map.into_iter().collect())
    }
}

impl std::ops::Index<&str> for DeviceStats {
    type Output = DeviceStat;

    /// A device's numbers; panics when it has no line, as a map's index.
    fn index(&self, name: &str) -> &DeviceStat {
        match self.get(name) {
            Some(st) => st,
            None => panic!("no diskstats line for {name:?}"),
        }
    }
}

/// Pure rate computation over a stream of diskstats samples at monotonic times.
///
/// Used live by [`Sampler`] and by replay with recorded times.
#[derive(Debug, Default, Clone)]
pub struct RateTracker {
    /// Each name of the last update with its counters then, in the order of
    /// its lines (a name listed twice: once, where it came first, with its
    /// last line's counters).
    prev: Vec<(String, Counters)>,
    /// Positions in `prev` in name order: the order of the output.
    order: Vec<usize>,
    /// Was a name listed twice in the last update?
    dupes: bool,
    /// Did the last update list other names than the one before (or the
    /// same in another order)? Each name counted once.
    names_changed: bool,
    prev_t: Option<f64>,
}

impl RateTracker {
    /// Feed the counters seen at monotonic time `t` (seconds); returns each
    /// device's statistics over the interval since the previous call.
    pub fn update(&mut self, t: f64, lines: &[DiskStatsLine]) -> DeviceStats {
        let itv = self.prev_t.map(|p| t - p);
        self.prev_t = Some(t);
        // Usually the kernel lists the same names in the same order as last
        // time: then each line's counters before are at its own position,
        // and the output order is known, with no lookup and no sort.
        let same = !self.dupes
            && lines.len() == self.prev.len()
            && lines.iter().zip(&self.prev).all(|(l, (n, _))| l.name == *n);
        self.names_changed = !same;
        if !same {
            return self.update_names(itv, lines);
        }
        let mut out = Vec::with_capacity(lines.len());
        for &i in &self.order {
            let (Some(l), Some((_, before))) = (lines.get(i), self.prev.get_mut(i)) else {
                continue;
            };
            let stats = match itv {
                Some(itv) => iostat::compute(before, &l.counters, itv),
                None => Err(NoData::FirstSample),
            };
            *before = l.counters;
            out.push((l.name.clone(), DeviceStat::new(l.counters, stats)));
        }
        // Already in order, each name once.
        DeviceStats::from_sorted(out)
    }

    /// [`RateTracker::update`] when the names changed: each line's
    /// counters before are looked up by name.
    fn update_names(&mut self, itv: Option<f64>, lines: &[DiskStatsLine]) -> DeviceStats {
        let before: HashMap<&str, &Counters> =
            self.prev.iter().map(|(n, c)| (n.as_str(), c)).collect();
        let mut out = BTreeMap::new();
        let mut prev: Vec<(String, Counters)> = Vec::with_capacity(lines.len());
        let mut at: HashMap<&str, usize> = HashMap::with_capacity(lines.len());
        let mut dupes = false;
        for l in lines {
            // A name listed twice: the last line counts, against the
            // previous update too. A name not seen in the previous update
            // (new, or back after it vanished) starts over.
            let stats = match (before.get(l.name.as_str()), itv) {
                (Some(b), Some(itv)) => iostat::compute(b, &l.counters, itv),
                _ => Err(NoData::FirstSample),
            };
            match at.get(l.name.as_str()) {
                Some(&j) => {
                    dupes = true;
                    if let Some((_, c)) = prev.get_mut(j) {
                        *c = l.counters;
                    }
                }
                None => {
                    at.insert(&l.name, prev.len());
                    prev.push((l.name.clone(), l.counters));
                }
            }
            out.insert(l.name.clone(), DeviceStat::new(l.counters, stats));
        }
        let mut order: Vec<usize> = (0..prev.len()).collect();
        order.sort_by(|&a, &b| prev[a].0.cmp(&prev[b].0));
        drop(before);
        // The names once each, as they came: a name listed twice on every
        // tick (takes this path every time) is no change of names.
        self.names_changed =
            prev.len() != self.prev.len() || prev.iter().zip(&self.prev).any(|(a, b)| a.0 != b.0);
        self.prev = prev;
        self.order = order;
        self.dupes = dupes;
        DeviceStats::from_sorted(out.into_iter().collect())
    }

    /// Did the last [`RateTracker::update`] see other names than the one
    /// before it (or the same in another order; a name listed twice counts
    /// once)?
    pub fn names_changed(&self) -> bool {
        self.names_changed
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
    pub stats: DeviceStats,
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
        // The sampler publishes devices in natural order: a binary search,
        // and a plain search for lists built otherwise (replay, tests).
        match self
            .devices
            .binary_search_by(|d| natural_cmp(&d.name, name))
        {
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
    /// With `first_rows`: this device is read in full before the first
    /// snapshot too, wherever its row is (the TUI's `--device`, the one a
    /// change key acts on at once).
    pub first: Option<String>,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        Self {
            only: None,
            identity: true,
            hotplug: HotPlug::Auto,
            first_rows: None,
            first: None,
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
    /// When its settings were last read or checked; `None`: not yet.
    last_check: Option<Instant>,
    /// Round-robin checks since its settings were last read in full.
    checks: u32,
    /// Its scheduler file, kept open for the round-robin's reads.
    sched_file: Option<OpenAttr>,
}

/// The scheduler files kept open ([`OpenAttr`]: a round-robin check reads
/// one with a `pread` instead of opening it), within a budget of
/// descriptors; the devices past it are read by path.
#[derive(Debug)]
struct OpenFiles {
    open: usize,
    cap: usize,
}

impl OpenFiles {
    fn new() -> Self {
        Self {
            open: 0,
            cap: spare_descriptors(),
        }
    }

    /// `e`'s scheduler line, from its kept file when it has one.
    fn read_scheduler(&mut self, root: &SysRoot, e: &mut Entry) -> SchedulerRead {
        self.with_file(&mut e.sched_file, |file, keep| {
            QueueSettings::read_scheduler_kept(root, &e.dev, file, keep)
        })
    }

    /// `e`'s settings as [`QueueSettings::read_basic`] reads them, its
    /// scheduler line as [`OpenFiles::read_scheduler`] does.
    fn read_basic(&mut self, root: &SysRoot, e: &mut Entry) -> QueueSettings {
        self.with_file(&mut e.sched_file, |file, keep| {
            QueueSettings::read_basic_kept(root, &e.dev, file, keep)
        })
    }

    /// Run a read through a device's kept file, allowed to open one while
    /// the budget lasts, and count what it kept or dropped.
    fn with_file<T>(
        &mut self,
        file: &mut Option<OpenAttr>,
        read: impl FnOnce(&mut Option<OpenAttr>, bool) -> T,
    ) -> T {
        let had = file.is_some();
        let out = read(file, had || self.open < self.cap);
        match (had, file.is_some()) {
            (false, true) => self.open += 1,
            (true, false) => self.open -= 1,
            _ => {}
        }
        out
    }

    /// An entry that went: its kept file, if any, is no longer counted.
    fn forget(&mut self, e: &Entry) {
        if e.sched_file.is_some() {
            self.open -= 1;
        }
    }
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
    refresh_every: Duration,
    /// The rows a screen shows now ([`Sampler::set_in_view`]); `None`: every
    /// row counts as shown.
    in_view: Option<BTreeSet<String>>,
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
    open_files: OpenFiles,
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
            refresh_every: SETTINGS_REFRESH,
            in_view: None,
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
            open_files: OpenFiles::new(),
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
                    last_check: None,
                    checks: 0,
                    sched_file: None,
                },
            );
        }
        // Rows in the order a table shows them first (loop2 before loop10).
        shown.sort_by(|a, b| natural_cmp(a, b));
        let n = shown.len().max(1) as u32;
        for (i, name) in shown.iter().enumerate() {
            let full_now = !self.opts.identity
                || self.opts.first_rows.is_none_or(|f| i < f)
                || self.opts.first.as_deref() == Some(name.as_str());
            if let Some(e) = self.entries.get_mut(name) {
                // Spread the round-robin over one period.
                e.next_check = now + self.refresh_every * (i as u32 + 1) / n;
                if full_now {
                    read_entry(&self.root, e, self.opts.identity, &mut self.open_files);
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

    /// The round-robin period: each device's settings are checked again
    /// within it.
    pub fn refresh_every(&self) -> Duration {
        self.refresh_every
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

    /// The rows a screen shows now: their settings are checked every
    /// period, the others every [`OFF_VIEW_EVERY`] periods, and a row that
    /// comes into view is checked a period after its last check (at the
    /// next tick when that is past), as if it had been in view all along.
    /// `None` (as at the start): every row, every period (`watch`, and a
    /// recording, whose rows are all shown).
    pub fn set_in_view(&mut self, rows: Option<&[String]>) {
        // Told every tick (the live worker does): nothing to do, and no
        // set built, while the rows stay the same.
        let same = match (&self.in_view, rows) {
            (None, None) => true,
            (Some(old), Some(new)) => old.len() == new.len() && new.iter().all(|n| old.contains(n)),
            _ => false,
        };
        if same {
            return;
        }
        let now = Instant::now();
        let rows: Option<BTreeSet<String>> = rows.map(|r| r.iter().cloned().collect());
        if let Some(new) = &rows {
            for name in new {
                if self.in_view.as_ref().is_some_and(|old| old.contains(name)) {
                    continue;
                }
                // As if it had been in view all along: a period after its
                // last check (at the next tick when that is past).
                if let Some(e) = self.entries.get_mut(name) {
                    let due = e.last_check.map_or(now, |t| t + self.refresh_every);
                    e.next_check = e.next_check.min(due);
                    // Off screen only its scheduler line was read: its
                    // first check in view reads everything.
                    e.checks = SETTINGS_EVERY;
                }
            }
        } else if self.in_view.is_some() {
            // Every row is due within a period again.
            for e in self.entries.values_mut() {
                e.next_check = e.next_check.min(now + self.refresh_every);
            }
        }
        self.in_view = rows;
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
                read_entry(&self.root, e, true, &mut self.open_files);
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
        let open_files = &mut self.open_files;
        self.entries.retain(|n, e| {
            let keep = now.contains(n);
            if !keep {
                open_files.forget(e);
            }
            keep
        });
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
            let gone = self.entries.remove(name);
            if let Some(e) = &gone {
                self.open_files.forget(e);
            }
            return gone.is_some();
        };
        let e = self
            .entries
            .entry(name.to_owned())
            .or_insert_with(|| Entry {
                dev,
                info: BlockDevice::unread(name),
                identity_for: None,
                next_check: now + SETTINGS_REFRESH,
                last_check: None,
                checks: 0,
                sched_file: None,
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
            read_entry(&self.root, e, self.opts.identity, &mut self.open_files);
        }
        e.info != before
    }

    /// Publish the entries as the snapshot's device list (sorted by name).
    fn publish(&mut self) {
        let mut v: Vec<BlockDevice> = self.entries.values().map(|e| e.info.clone()).collect();
        // The order every view shows (loop2 before loop10).
        v.sort_by(|a, b| natural_cmp(&a.name, &b.name));
        self.devices = Arc::new(v);
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
        let mut stats = self.rates.update(t, &lines);

        // A name that came or went in diskstats is hot-plug too (and all
        // there is when events cannot be heard).
        let names_changed = self.rates.names_changed();
        let mut changed = false;
        let lost = std::mem::take(&mut self.rescan);
        // Entries made or read again this tick take their device numbers
        // from diskstats below.
        let mut renumber = names_changed || lost;
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
        renumber |= !pending.is_empty();
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
            let shown = self.in_view.as_ref().is_none_or(|v| v.contains(name));
            let period = if shown { 1 } else { OFF_VIEW_EVERY };
            e.next_check = now + self.refresh_every * period;
            e.last_check = Some(now);
            if asked || e.identity_for.is_none() && identity {
                let before = e.info.queue.clone();
                read_entry(&self.root, e, identity, &mut self.open_files);
                changed |= e.info.queue != before;
                continue;
            }
            // The scheduler line is the cheap sign of someone else's change;
            // everything else is read when it moved, and every few checks
            // of a row in view (a row off screen: when it comes into view).
            if shown {
                e.checks += 1;
            }
            let sched = self.open_files.read_scheduler(&self.root, e);
            let moved =
                sched.as_ref().ok().and_then(Option::as_ref) != e.info.queue.scheduler.as_ref();
            if moved || e.checks >= full_every {
                let mut q = QueueSettings::read_basic_with(&self.root, &e.dev, sched);
                if identity {
                    q.read_tunables(&self.root, &e.dev);
                }
                changed |= q != e.info.queue;
                e.info.queue = q;
                e.checks = 0;
            }
        }

        // Device numbers come with every diskstats line, so no file is read
        // for them; `watch`, which reads no identity, needs them to find a
        // device's kernel histograms. A device keeps its numbers until it is
        // replaced, which hot-plug tells (a rescan or a reload): only then.
        if renumber {
            for l in &lines {
                if let Some(e) = self.entries.get_mut(&l.name)
                    && (e.info.major, e.info.minor) != (l.major, l.minor)
                {
                    (e.info.major, e.info.minor) = (l.major, l.minor);
                    changed = true;
                }
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
                read_entry(&self.root, e, true, &mut self.open_files);
                filled += 1;
                changed = true;
            }
        }
        if changed {
            self.publish();
        }

        if self.opts.identity {
            self.split_in_flight(&mut stats);
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

impl Sampler {
    /// Each whole device's I/Os in flight by direction. A device with none
    /// in diskstats needs no read (an idle machine reads nothing); only the
    /// busy ones cost one small file each.
    fn split_in_flight(&self, stats: &mut DeviceStats) {
        for (name, st) in stats.iter_mut() {
            // Idle: no lookup either (a thousand per tick otherwise).
            if st.counters.in_flight == 0 {
                st.in_flight = Some(InFlight::default());
                continue;
            }
            st.in_flight = match self.entries.get(name) {
                Some(e) if e.info.size_bytes > 0 => self.root.read_inflight(&e.dev).ok(),
                _ => None,
            };
        }
    }
}

/// Read a device's settings, and its identity when wanted and not yet read
/// for its `diskseq`.
fn read_entry(root: &SysRoot, e: &mut Entry, identity: bool, open_files: &mut OpenFiles) {
    if identity {
        if e.identity_for.is_none() {
            e.info.read_size(root, &e.dev);
            e.info.read_identity(root, &e.dev, Identity::Full);
            e.identity_for = Some(e.info.diskseq);
        }
        e.info.queue = open_files.read_basic(root, e);
        e.info.queue.read_tunables(root, &e.dev);
    } else {
        e.info.queue = open_files.read_basic(root, e);
        let n = &e.info.name;
        if n.starts_with("sd") || n.starts_with("hd") {
            e.info.read_rotational(root, &e.dev);
        }
    }
    e.checks = 0;
}

#[cfg(test)]
mod tests;
