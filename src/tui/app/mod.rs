//! The whole state of the screen in one struct, with no I/O: it takes
//! [`Feed`] messages from a source (live or replay) and [`Action`](super::command::Action)s from keys,
//! and answers with [`Control`](super::source::Control) messages for the source. Rendering borrows it.
//! Key handling lives in [`keys`].

mod dialogs;
mod keys;
mod latency;
mod probe;
mod replay;

pub use latency::{
    LatencyPoint, LatencyState, MAX_LATENCY_POINTS, Quantile, Tracing, Window, compare_windows,
    latency_delta,
};
pub use probe::{ProbeMeans, ProbePoint, ProbeState, compare_p99, probe_means};

use super::bench_dialog::{BenchDialog, Stage};
use super::command::Mode;
use super::edit::{Editor, NrLimit};
use super::export_dialog::{ExportDialog, Focus};
use super::source::{ApplyKind, ApplyReport, Feed, ReplayPosition};
use blktune_core::device::BlockDevice;
use blktune_core::export::UdevDb;
use blktune_core::history::{ChangeMark, Comparison, DeviceHistory, Point, compare};
use blktune_core::host::HostInfo;
use blktune_core::iostat::ExtStats;
use blktune_core::sampler::Snapshot;
use blktune_core::tuner::Settings;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Seconds of history kept per device (the charts show up to this).
pub const KEEP_SECS: f64 = 600.0;
/// Above this many devices only the selected and changed ones keep a long history.
pub const FULL_HISTORY_DEVICES: usize = 64;
/// Points kept for the table's sparkline of other devices.
pub const SHORT_POINTS: f64 = 24.0;
/// Seconds before a change that the before/after table looks at, at most.
pub const BEFORE_WINDOW: f64 = 60.0;
/// The sample intervals `+` and `-` step through.
pub const INTERVALS_MS: [u64; 7] = [100, 250, 500, 1000, 2000, 5000, 10000];

/// The table's sort column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Name,
    Util,
    Await,
    Iops,
}

impl SortKey {
    /// The next column `o` moves to.
    pub fn next(self) -> Self {
        match self {
            SortKey::Name => SortKey::Util,
            SortKey::Util => SortKey::Await,
            SortKey::Await => SortKey::Iops,
            SortKey::Iops => SortKey::Name,
        }
    }

    /// How the status line names it.
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Name => "name",
            SortKey::Util => "%util",
            SortKey::Await => "await",
            SortKey::Iops => "IOPS",
        }
    }
}

/// A box drawn over the main view; it takes the keys first.
#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    Picker {
        device: String,
        /// The device's `diskseq` when the picker opened: Enter acts only
        /// while the selected device is still this one.
        diskseq: Option<u64>,
        options: Vec<String>,
        active: String,
        cursor: usize,
    },
    Tunables {
        device: String,
        /// The device's `diskseq` when the list opened.
        diskseq: Option<u64>,
        scheduler: String,
        items: Vec<(String, String)>,
        cursor: usize,
    },
    Edit(Editor),
    Help {
        scroll: u16,
    },
    Confirm {
        devices: Vec<String>,
    },
    /// The udev export dialog (`e`).
    Export(Box<ExportDialog>),
    /// The scheduler shoot-out (`b`).
    Bench(Box<BenchDialog>),
}

/// How a status message reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusKind {
    Info,
    Done,
    Error,
}

/// The status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub kind: StatusKind,
}

/// The answers of one `U` (revert every change) so far.
#[derive(Debug, Default)]
struct RevertBatch {
    left: usize,
    reverted: Vec<String>,
    /// The errors (each names its device).
    failed: Vec<String>,
}

/// What the app is started with.
#[derive(Debug, Clone)]
pub struct Config {
    pub host: HostInfo,
    /// Why changes are disabled, or `None` when they are allowed.
    pub read_only: Option<String>,
    pub interval: Duration,
    /// Page size in KiB (read_ahead_kb is kept in pages).
    pub page_kb: u64,
    pub color: bool,
    /// Device to select at start.
    pub select: Option<String>,
}

/// One device's changes in this session that are still in force.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionChange {
    pub device: String,
    /// The settings before the session's first change.
    pub original: Settings,
    pub labels: Vec<String>,
}

/// The state of the screen.
#[derive(Debug)]
pub struct App {
    pub host: HostInfo,
    pub read_only: Option<String>,
    pub interval: Duration,
    pub page_kb: u64,
    pub color: bool,
    pub paused: bool,
    pub devices: Arc<Vec<BlockDevice>>,
    pub histories: HashMap<String, DeviceHistory>,
    /// Every change seen, per device, oldest first.
    pub marks: HashMap<String, Vec<ChangeMark>>,
    /// Changes of this session not undone, per device, oldest first.
    pub undo: HashMap<String, Vec<ChangeMark>>,
    pub selected: Option<String>,
    selected_pos: usize,
    pub sort: SortKey,
    pub filter: String,
    pub filter_typing: bool,
    pub overlay: Option<Overlay>,
    pub status: Option<Status>,
    /// Changes sent to the source and not answered yet.
    pub pending: usize,
    /// Monotonic seconds of the newest snapshot.
    pub now: f64,
    pub iowait: Option<f64>,
    pub samples: u64,
    /// Set by a replay source; shown in the header.
    pub replay: Option<ReplayPosition>,
    /// Rows of the device table on screen (page size for PgUp/PgDn).
    pub page_rows: usize,
    /// The file `R` records to, while it does.
    pub recording: Option<std::path::PathBuf>,
    /// `blktune demo`: the scratch device the guided hint is about.
    pub demo: Option<String>,
    /// The latency probe (`--probe`, `P`); `None` when it is off.
    pub probe: Option<ProbeState>,
    /// Reads per second of the probe when `P` turns it on.
    pub probe_rate: f64,
    /// The kernel's latency histograms (`Tracing::Unknown` in a replay).
    pub latency: LatencyState,
    pub quit: bool,
    /// Where the export dialog reads udev properties (`None`: none, as in tests).
    pub udev_db: Option<UdevDb>,
    next_id: u64,
    /// `U`: answers still due, and the devices reverted and failed so far,
    /// so the status names every device, not the last answer.
    reverting: Option<RevertBatch>,
    want_select: Option<String>,
    /// Select the first row when one appears: true until a selection is
    /// made, so that a vanished device leaves nothing selected.
    auto_select: bool,
    /// Names whose device was replaced by another one (same name, new
    /// `diskseq`: a loop device detached and re-attached between two
    /// snapshots) in the snapshot being handled: they count as vanished.
    replaced: Vec<String>,
}

impl App {
    /// A fresh app with no data yet.
    pub fn new(cfg: Config) -> Self {
        Self {
            host: cfg.host,
            read_only: cfg.read_only,
            interval: cfg.interval,
            page_kb: cfg.page_kb,
            color: cfg.color,
            paused: false,
            devices: Arc::new(Vec::new()),
            histories: HashMap::new(),
            marks: HashMap::new(),
            undo: HashMap::new(),
            selected: None,
            selected_pos: 0,
            sort: SortKey::Name,
            filter: String::new(),
            filter_typing: false,
            overlay: None,
            status: None,
            pending: 0,
            now: 0.0,
            iowait: None,
            samples: 0,
            replay: None,
            page_rows: 10,
            recording: None,
            demo: None,
            probe: None,
            probe_rate: blktune_core::probe::DEFAULT_RATE,
            latency: LatencyState::default(),
            quit: false,
            udev_db: None,
            next_id: 1,
            reverting: None,
            want_select: cfg.select,
            auto_select: true,
            replaced: Vec::new(),
        }
    }

    /// Which key bindings are in force.
    pub fn mode(&self) -> Mode {
        match &self.overlay {
            Some(Overlay::Picker { .. } | Overlay::Tunables { .. }) => Mode::List,
            Some(Overlay::Edit(_)) => Mode::Text,
            Some(Overlay::Help { .. }) => Mode::Help,
            Some(Overlay::Confirm { .. }) => Mode::Confirm,
            Some(Overlay::Export(d)) => match d.focus {
                Focus::Path { .. } => Mode::Text,
                Focus::Overwrite | Focus::Warnings => Mode::Confirm,
                Focus::Options | Focus::Writing => Mode::Export,
            },
            Some(Overlay::Bench(_)) => Mode::Bench,
            None if self.filter_typing => Mode::Text,
            None if self.replay.is_some() => Mode::Replay,
            None => Mode::Main,
        }
    }

    fn say(&mut self, kind: StatusKind, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            kind,
        });
    }

    // ---- what the screen shows -------------------------------------------

    /// Is this device a row of the table (it has a size and matches the filter)?
    pub fn is_shown(&self, d: &BlockDevice) -> bool {
        d.size_bytes > 0 && (self.filter.is_empty() || d.name.contains(&self.filter.to_lowercase()))
    }

    /// How many rows the table has (without sorting them).
    pub fn visible_count(&self) -> usize {
        self.devices.iter().filter(|d| self.is_shown(d)).count()
    }

    /// Devices in the table, filtered and sorted.
    pub fn visible(&self) -> Vec<&BlockDevice> {
        // The sort key is computed once per device, not per comparison.
        let mut v: Vec<(f64, &BlockDevice)> = self
            .devices
            .iter()
            .filter(|d| self.is_shown(d))
            .map(|d| {
                let m = self.latest(&d.name).map_or(-1.0, |s| match self.sort {
                    SortKey::Name => 0.0,
                    SortKey::Util => s.util,
                    SortKey::Await => s.max_await(),
                    SortKey::Iops => s.iops(),
                });
                (m, d)
            })
            .collect();
        v.sort_by(|(ma, a), (mb, b)| {
            mb.partial_cmp(ma)
                .unwrap_or(Ordering::Equal)
                .then_with(|| natural_cmp(&a.name, &b.name))
        });
        v.into_iter().map(|(_, d)| d).collect()
    }

    /// The selected device, if it is on the machine and a row of the table:
    /// the one the change keys act on. A selection hidden by the filter is
    /// none ([`App::hidden_selection`]).
    pub fn selected_device(&self) -> Option<&BlockDevice> {
        let name = self.selected.as_deref()?;
        self.devices
            .iter()
            .find(|d| d.name == name && self.is_shown(d))
            .filter(|d| self.is_present(&d.name))
    }

    /// The selected device's name while the filter hides its row: it stays
    /// selected (Esc brings it back) but no key acts on it meanwhile.
    pub fn hidden_selection(&self) -> Option<&str> {
        let name = self.selected.as_deref()?;
        (self.is_present(name) && self.selected_device().is_none()).then_some(name)
    }

    /// What a device key says when [`App::selected_device`] is `None`.
    pub(super) fn no_selection(&self) -> String {
        match self.hidden_selection() {
            Some(name) => format!(
                "'{name}' is selected but hidden by the filter '{}': Esc clears the filter, \
                 ↑/↓ selects a shown row; nothing was changed",
                self.filter
            ),
            None => keys::NO_SELECTION.to_string(),
        }
    }

    /// Is `device` with `diskseq` still the selected device on screen? The
    /// check every dialog makes before it acts: `Err` says why not (the
    /// dialog then closes). A device replaced under the same name has
    /// another `diskseq`, so a dialog opened on the old one never acts on it.
    pub(super) fn still_selected(&self, device: &str, diskseq: Option<u64>) -> Result<(), String> {
        if !self.is_present(device) {
            return Err(format!("'{device}' {}", self.gone(device)));
        }
        match self.selected_device() {
            Some(d) if d.name == device && d.diskseq == diskseq => Ok(()),
            Some(d) if d.name == device => Err(format!(
                "'{device}' was replaced by another device of that name (new diskseq)"
            )),
            _ => Err(format!("'{device}' is no longer the selected device")),
        }
    }

    /// The `diskseq` of `name` in the last snapshot.
    pub(super) fn diskseq_of(&self, name: &str) -> Option<u64> {
        self.devices
            .iter()
            .find(|d| d.name == name)
            .and_then(|d| d.diskseq)
    }

    /// What bounds nr_requests on `name` now, from the last snapshot.
    pub fn nr_limit(&self, name: &str) -> NrLimit {
        self.devices
            .iter()
            .find(|d| d.name == name)
            .map(NrLimit::of)
            .unwrap_or_default()
    }

    /// The newest statistics of a device.
    pub fn latest(&self, name: &str) -> Option<&ExtStats> {
        self.histories.get(name)?.last()?.stats.as_ref()
    }

    /// The newest change of a device and its before/after comparison.
    pub fn last_change(&self, name: &str) -> Option<(&ChangeMark, Comparison)> {
        self.changes_with_comparison(name).pop()
    }

    /// Every change of a device with its comparison, oldest first.
    pub fn changes_with_comparison(&self, name: &str) -> Vec<(&ChangeMark, Comparison)> {
        let (Some(marks), Some(h)) = (self.marks.get(name), self.histories.get(name)) else {
            return Vec::new();
        };
        marks
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let prev = i.checked_sub(1).map(|p| marks[p].t);
                let next = marks.get(i + 1).map(|n| n.t);
                (m, compare(h, m.t, BEFORE_WINDOW, prev, next))
            })
            .collect()
    }

    /// Changes still in force, for the summary printed on exit.
    pub fn session(&self) -> Vec<SessionChange> {
        let mut v: Vec<SessionChange> = self
            .undo
            .iter()
            .filter_map(|(dev, stack)| {
                Some(SessionChange {
                    device: dev.clone(),
                    original: stack.first()?.before.clone(),
                    labels: stack.iter().map(|m| m.label.clone()).collect(),
                })
            })
            .collect();
        v.sort_by(|a, b| natural_cmp(&a.device, &b.device));
        v
    }

    // ---- feed from the source --------------------------------------------

    /// Take one message of the source.
    pub fn on_feed(&mut self, feed: Feed) {
        match feed {
            Feed::Snapshot(s) => self.on_snapshot(&s),
            Feed::Change(mark) => self.add_mark(mark),
            Feed::Applied(r) => self.on_applied(*r),
            Feed::Position(p) => self.on_position(p),
            Feed::Error(e) => self.say(StatusKind::Error, e),
            Feed::Bench(b) => self.on_bench_feed(b),
            Feed::ExportWritten(r) => self.on_export_written(r),
            Feed::Reset => self.reset(),
            Feed::Record(ev) => self.on_record(ev),
            Feed::Probe(p) => self.on_probe(&p),
        }
    }

    fn add_mark(&mut self, mark: ChangeMark) {
        self.marks
            .entry(mark.device.clone())
            .or_default()
            .push(mark);
    }

    fn keep_secs(&self, name: &str) -> f64 {
        let long = self.devices.len() <= FULL_HISTORY_DEVICES
            || self.selected.as_deref() == Some(name)
            || self.marks.contains_key(name);
        if long {
            KEEP_SECS
        } else {
            SHORT_POINTS * self.interval.as_secs_f64()
        }
    }

    fn on_snapshot(&mut self, s: &Snapshot) {
        self.now = s.t;
        self.iowait = s.iowait_pct;
        self.samples += 1;
        self.replaced.clear();
        if !Arc::ptr_eq(&self.devices, &s.devices) {
            self.replaced = replaced_devices(&self.devices, &s.devices);
            self.devices = Arc::clone(&s.devices);
            let devs = Arc::clone(&self.devices);
            let replaced = self.replaced.clone();
            for name in &replaced {
                // Its originals belong to the device that went: never undo
                // onto the new one (`blktune revert` explains what is left).
                self.marks.remove(name);
                if self.undo.remove(name).is_some() {
                    self.say(
                        StatusKind::Error,
                        format!(
                            "'{name}' was replaced by another device of that name (new diskseq): \
                             its changes can no longer be undone here; see 'blktune revert {name}'"
                        ),
                    );
                }
            }
            // Another device's history must not go on under the same name.
            self.histories.retain(|name, _| {
                !replaced.contains(name) && devs.iter().any(|d| &d.name == name && d.size_bytes > 0)
            });
            if let Some(p) = &mut self.probe {
                p.history
                    .retain(|name, _| devs.iter().any(|d| &d.name == name && d.size_bytes > 0));
            }
        }
        if let Some(itv) = s.interval {
            let devs = Arc::clone(&self.devices);
            for d in devs.iter().filter(|d| d.size_bytes > 0) {
                let keep = self.keep_secs(&d.name);
                let p = Point {
                    t: s.t,
                    itv,
                    stats: s.ext(&d.name).copied(),
                };
                self.histories
                    .entry(d.name.clone())
                    .or_default()
                    .push(p, keep);
            }
        }
        self.reconcile_selection();
        if let Some((why, what)) = self.close_overlay_of_other_device() {
            self.say(
                StatusKind::Error,
                format!(
                    "{why}: {what} closed, nothing changed{}",
                    if self.selected.is_none() {
                        "; no device selected"
                    } else {
                        ""
                    }
                ),
            );
        }
    }

    /// Is this device on the machine with a size (a detached loop device
    /// keeps its sysfs entry with size 0)?
    fn is_present(&self, name: &str) -> bool {
        !self.replaced.iter().any(|r| r == name)
            && self
                .devices
                .iter()
                .any(|d| d.name == name && d.size_bytes > 0)
    }

    /// How a device that is no longer there went.
    fn gone(&self, name: &str) -> &'static str {
        if self.replaced.iter().any(|r| r == name) {
            "was replaced by another device of that name (new diskseq)"
        } else {
            "vanished"
        }
    }

    /// The device a dialog acts on (name and `diskseq` when it opened), and
    /// what the dialog is called; `None` for dialogs that change no device.
    fn overlay_device(&self) -> Option<(&str, Option<u64>, &'static str)> {
        Some(match self.overlay.as_ref()? {
            Overlay::Picker {
                device, diskseq, ..
            } => (device, *diskseq, "scheduler picker"),
            Overlay::Tunables {
                device, diskseq, ..
            } => (device, *diskseq, "tunables list"),
            Overlay::Edit(e) => (&e.device, e.diskseq, "editor"),
            // A running shoot-out fails by itself and restores what it can;
            // its setup or its results must not outlive the device.
            Overlay::Bench(b) if !matches!(b.stage, Stage::Running { .. }) => {
                (&b.device, b.diskseq, "shoot-out")
            }
            _ => return None,
        })
    }

    /// Close a dialog whose device is no longer the selected one (it
    /// vanished, was replaced, or the selection moved), so that Enter cannot
    /// apply it to a device the user is not looking at; returns why and the dialog.
    fn close_overlay_of_other_device(&mut self) -> Option<(String, &'static str)> {
        let (dev, seq, what) = self.overlay_device()?;
        let why = self.still_selected(dev, seq).err()?;
        self.overlay = None;
        Some((why, what))
    }

    /// The selection follows the device name. A vanished device leaves
    /// nothing selected (never a neighbour: change keys would then act on
    /// another device); the first selection, and one hidden by the filter
    /// the user types, go to the row at the same place.
    fn reconcile_selection(&mut self) {
        // Fast path, every tick: the selection is still on the machine
        // (a row, or hidden by the filter).
        if self.want_select.is_none()
            && match &self.selected {
                Some(sel) => self.is_present(sel),
                None => !self.auto_select,
            }
        {
            return;
        }
        let names: Vec<String> = self.visible().iter().map(|d| d.name.clone()).collect();
        if let Some(want) = self.want_select.take() {
            if names.contains(&want) {
                self.selected = Some(want);
            } else {
                // Never another device in its place: the user named this one.
                self.auto_select = false;
                self.say(
                    StatusKind::Error,
                    format!(
                        "'{want}' is not shown (no such device, or size 0); \
                         no device selected (↑/↓ selects one)"
                    ),
                );
            }
        }
        let pos = self.selected_pos.min(names.len().saturating_sub(1));
        match self.selected.clone() {
            // A row, or hidden by the filter: it stays on its device (never
            // on the row the filter left at its place: keys would then act
            // on a device the user did not choose).
            Some(sel) if self.is_present(&sel) => {}
            Some(sel) => {
                self.selected = None;
                self.say(
                    StatusKind::Error,
                    format!(
                        "'{sel}' {}; no device selected (↑/↓ selects one)",
                        self.gone(&sel)
                    ),
                );
            }
            None if self.auto_select => self.selected = names.get(pos).cloned(),
            None => {}
        }
        if let Some(sel) = &self.selected {
            self.auto_select = false;
            if let Some(p) = names.iter().position(|n| n == sel) {
                self.selected_pos = p;
            }
        }
    }

    fn on_applied(&mut self, r: ApplyReport) {
        self.pending = self.pending.saturating_sub(1);
        if r.request.kind == ApplyKind::RevertAll {
            return self.on_reverted(r);
        }
        let dev = r.request.device.clone();
        match r.result {
            Err(e) => self.say(StatusKind::Error, e),
            Ok((o, mark)) => {
                let ms = o.kernel_time.as_secs_f64() * 1000.0;
                let label = mark.label.clone();
                let what = match r.request.kind {
                    ApplyKind::Change => "",
                    ApplyKind::Undo => "undo: ",
                    ApplyKind::RevertAll => "reverted: ",
                };
                if o.changes.is_empty() {
                    self.say(StatusKind::Info, format!("{what}{dev}: no change"));
                    return;
                }
                // The device was replaced since (another diskseq in the
                // snapshot now): its undo and settings are not the new one's.
                let now = self.diskseq_of(&dev);
                if r.request.diskseq.is_some() && now.is_some() && now != r.request.diskseq {
                    self.undo.remove(&dev);
                    self.say(
                        StatusKind::Error,
                        format!(
                            "{what}{dev}: {label} was made on the device before it was replaced \
                             (new diskseq); see 'blktune revert {dev}'"
                        ),
                    );
                    return;
                }
                match r.request.kind {
                    ApplyKind::Change => {
                        self.undo.entry(dev.clone()).or_default().push(mark.clone())
                    }
                    ApplyKind::Undo => {
                        if let Some(stack) = self.undo.get_mut(&dev) {
                            stack.pop();
                        }
                    }
                    ApplyKind::RevertAll => {
                        self.undo.remove(&dev);
                    }
                }
                self.undo.retain(|_, s| !s.is_empty());
                // Show the read-back settings at once: a picker opened before
                // the next snapshot must start from the scheduler now active.
                if let Some(d) = Arc::make_mut(&mut self.devices)
                    .iter_mut()
                    .find(|d| d.name == dev)
                {
                    d.queue = o.after.clone();
                }
                self.add_mark(mark);
                self.say(
                    StatusKind::Done,
                    format!("{what}{dev}: {label} (kernel {ms:.1} ms)"),
                );
            }
        }
    }
}

impl App {
    /// One answer of a `U`; the last one says what happened to every device.
    fn on_reverted(&mut self, r: ApplyReport) {
        let dev = r.request.device.clone();
        let batch = self.reverting.get_or_insert_with(RevertBatch::default);
        batch.left = batch.left.saturating_sub(1);
        let error = match r.result {
            Err(e) => {
                batch.failed.push(e.clone());
                Some(e)
            }
            Ok((o, mark)) => {
                batch.reverted.push(dev.clone());
                self.undo.remove(&dev);
                if !o.changes.is_empty() {
                    if let Some(d) = Arc::make_mut(&mut self.devices)
                        .iter_mut()
                        .find(|d| d.name == dev)
                    {
                        d.queue = o.after.clone();
                    }
                    self.add_mark(mark);
                }
                None
            }
        };
        let Some(batch) = self.reverting.take_if(|b| b.left == 0) else {
            // More answers to come; an error shows at once (it names its device).
            if let Some(e) = error {
                self.say(StatusKind::Error, e);
            }
            return;
        };
        let done = batch.reverted.join(", ");
        let n = batch.reverted.len();
        if batch.failed.is_empty() {
            self.say(
                StatusKind::Done,
                format!("reverted {n} device(s) to their settings before this session: {done}"),
            );
        } else {
            let failed = batch.failed.join("; ");
            self.say(
                StatusKind::Error,
                format!("reverted {n} device(s): {done}; NOT reverted: {failed}"),
            );
        }
    }
}

/// `250ms`, `1s`, `10s`.
pub fn fmt_interval(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 || !ms.is_multiple_of(1000) {
        format!("{ms}ms")
    } else {
        format!("{}s", ms / 1000)
    }
}

/// Names with their numbers in order: `loop2` before `loop10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let (nx, ny) = (digits(x), digits(y));
                let strip = |s: &'_ [u8]| -> usize { s.iter().take_while(|&&c| c == b'0').count() };
                let (tx, ty) = (&x[strip(&x[..nx])..nx], &y[strip(&y[..ny])..ny]);
                // Numbers compare by length first (no leading zeros), then digit by digit.
                match tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty)) {
                    Ordering::Equal => (x, y) = (&x[nx..], &y[ny..]),
                    o => return o,
                }
            }
            (Some(c), Some(d)) if c != d => return c.cmp(d),
            _ => (x, y) = (&x[1..], &y[1..]),
        }
    }
}

/// Names whose device in `new` is another one than in `old`: both have a
/// `diskseq` (kernel 5.15+, new on every attach and also on a loop
/// device's detach) and they differ, and the new one has a size (a
/// detached loop device is just vanished). Pure.
pub fn replaced_devices(old: &[BlockDevice], new: &[BlockDevice]) -> Vec<String> {
    new.iter()
        .filter(|n| n.size_bytes > 0)
        .filter(|n| {
            old.iter().any(|o| {
                o.name == n.name && matches!((o.diskseq, n.diskseq), (Some(a), Some(b)) if a != b)
            })
        })
        .map(|n| n.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_naturally() {
        let mut v = [
            "loop10", "sda", "loop2", "nvme0n1", "loop", "nvme10n1", "nvme2n1",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            [
                "loop", "loop2", "loop10", "nvme0n1", "nvme2n1", "nvme10n1", "sda"
            ]
        );
        assert_eq!(fmt_interval(Duration::from_millis(250)), "250ms");
        assert_eq!(fmt_interval(Duration::from_secs(2)), "2s");
        assert_eq!(fmt_interval(Duration::from_millis(1500)), "1500ms");
    }
}
