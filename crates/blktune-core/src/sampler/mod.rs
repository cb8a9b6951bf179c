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
//!
//! By idea: [`stats`] (one interval's numbers, by name), [`rates`] (the pure
//! rate computation), [`snapshot`] (what a tick produced), [`options`] (what
//! to read), [`open_files`] (the budget of files kept open); this file is
//! the sampler itself.

mod open_files;
mod options;
mod rates;
mod snapshot;
mod stats;

pub use options::{HotPlug, SamplerOptions};
pub use rates::RateTracker;
pub use snapshot::Snapshot;
pub use stats::{DeviceStat, DeviceStats};

use open_files::OpenFiles;

use crate::device::{BlockDevice, Identity, QueueSettings};
use crate::diskstats::{self, InFlight};
use crate::host::CpuTimes;
use crate::natural::natural_cmp;
use crate::os::{DeviceName, OpenAttr, SysRoot};
use crate::pressure::{IoPressure, Pressure};
use crate::uevent::{Action, Uevent, UeventSocket};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
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
    /// The `diskseq` its stack and `hidden` flag were read for (a sampler
    /// that reads no identity reads them alone).
    stack_for: Option<Option<u64>>,
    /// When the round-robin looks at it next.
    next_check: Instant,
    /// When its settings were last read or checked; `None`: not yet.
    last_check: Option<Instant>,
    /// Round-robin checks since its settings were last read in full.
    checks: u32,
    /// Its scheduler file, kept open for the round-robin's reads.
    sched_file: Option<OpenAttr>,
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
    /// Where the counters come from when not `<proc>/diskstats`, said once
    /// by the views ([`Sampler::counters_note`]).
    counters_note: Option<String>,
    /// The snapshot taken by [`Sampler::new`], until someone takes it.
    baseline: Option<Snapshot>,
    text: String,
    cpu: Option<CpuTimes>,
    /// The last reading of `<proc>/pressure/io`.
    pressure: Option<Pressure>,
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
            counters_note: None,
            baseline: None,
            text: String::new(),
            cpu: None,
            pressure: None,
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
            if !info.is_empty() {
                shown.push(dev.as_str().to_owned());
            }
            let name = dev.as_str().to_owned();
            self.entries.insert(
                name,
                Entry {
                    dev,
                    info,
                    identity_for: None,
                    stack_for: None,
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
                && !e.info.is_empty()
            {
                read_entry(&self.root, e, true, &mut self.open_files);
                changed = true;
            }
        }
        if changed {
            self.publish();
        }
    }

    /// What is missing when `<proc>/diskstats` is (a captured tree): where
    /// the counters come from instead, or that there are none. `None` when
    /// diskstats was read.
    pub fn counters_note(&self) -> Option<&str> {
        self.counters_note.as_deref()
    }

    /// `<proc>/diskstats` into `text`; when it is missing, each device's
    /// sysfs `stat` file, and when those are missing too, no counters (the
    /// devices and their settings are still shown, as `list` shows them).
    fn read_counters(&mut self, text: &mut String) -> io::Result<()> {
        let read = self.root.read_diskstats_into(text);
        let Err(e) = &read else {
            self.counters_note = None;
            return read;
        };
        if e.kind() != io::ErrorKind::NotFound {
            return read;
        }
        let diskstats = self.root.procfs().join("diskstats");
        self.counters_note = Some(match self.root.read_block_stats_into(text) {
            Ok(()) => format!(
                "no {}: counters from each device's stat file under {}/block",
                diskstats.display(),
                self.root.sysfs().display()
            ),
            Err(_) => {
                text.clear();
                format!(
                    "no {} and no stat files under {}/block: no rates, settings only",
                    diskstats.display(),
                    self.root.sysfs().display()
                )
            }
        });
        Ok(())
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
                stack_for: None,
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
        if !e.info.is_empty() {
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
        let read = self.read_counters(&mut text);
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
            if !(asked || due) || e.info.is_empty() {
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
                    q.read_details(&self.root, &e.dev);
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
                && !e.info.is_empty()
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
        let cpu_busy_pct = match (&self.cpu, &cpu) {
            (Some(p), Some(c)) => c.busy_pct_since(p),
            _ => None,
        };
        self.cpu = cpu;
        // One small read; a kernel without PSI has no file (and says so once
        // per tick with ENOENT, which costs nothing).
        let psi = self
            .root
            .read_proc("pressure/io")
            .ok()
            .and_then(|s| Pressure::parse(&s));
        let pressure = psi.map(|p| IoPressure::since(p, self.pressure.as_ref(), interval));
        self.pressure = psi;

        Ok(Snapshot {
            wall,
            t,
            interval,
            devices: Arc::clone(&self.devices),
            refreshed: changed,
            stats,
            iowait_pct,
            cpu_busy_pct,
            pressure,
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
                Some(e) if !e.info.is_empty() => self.root.read_inflight(&e.dev).ok(),
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
        e.info.queue.read_details(root, &e.dev);
    } else {
        e.info.queue = open_files.read_basic(root, e);
        let n = &e.info.name;
        if n.starts_with("sd") || n.starts_with("hd") {
            e.info.read_rotational(root, &e.dev);
        }
        // What makes a stack a row of its own (dm, md, an NVMe head) and
        // an NVMe path none: once per incarnation.
        if e.stack_for != Some(e.info.diskseq) {
            read_stack(root, e);
        }
    }
    e.checks = 0;
}

/// A device's stack and `hidden` flag, for a sampler that reads no
/// identity: the two facts that decide whether it is a row by default.
fn read_stack(root: &SysRoot, e: &mut Entry) {
    let name = e.info.name.clone();
    if crate::stack::may_be_stack(&name) {
        let names = if name.starts_with("nvme") {
            root.block_names().unwrap_or_default()
        } else {
            Vec::new()
        };
        e.info.stack = crate::stack::Stack::read(root, &e.dev, &names);
    }
    if name.starts_with("nvme") {
        e.info.hidden = root.read_dev_attr(&e.dev, "hidden").is_ok_and(|h| h == "1");
    }
    e.stack_for = Some(e.info.diskseq);
}

#[cfg(test)]
mod tests;
