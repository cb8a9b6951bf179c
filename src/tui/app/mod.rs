//! The whole state of the screen in one struct, with no I/O: it takes
//! [`Feed`](super::worker::protocol::Feed) messages from a worker (live or replay)
//! and [`Action`](super::command::Action)s from keys, and answers with
//! [`Control`](super::worker::protocol::Control) messages for the worker. Rendering
//! borrows it.
//!
//! - this file: the state and what the screen shows (rows, selection, history)
//! - `feed`: snapshots, marks and the answers to changes
//! - `keys`: actions of the main view and the filter
//! - `dialogs`: opening the dialogs ([`crate::tui::dialogs`]) and doing what they answer
//! - `probe`, `replay`: the latency probe's history; replay and `R`
//! - `processes`: the processes panel (`i`) and where each device's I/O goes
//! - `sort`: the table's order and the rows that stand out

mod ab;
mod change;
pub mod demo;
mod dialogs;
mod feed;
mod keys;
mod latency;
mod probe;
mod processes;
pub mod replay;
mod sort;

pub use ab::AbState;
pub use change::SystemHistory;
pub use latency::{
    LatencyPoint, LatencyState, MAX_LATENCY_POINTS, Quantile, Tracing, Window, compare_windows,
    latency_delta,
};
pub use probe::{ProbePoint, ProbeState, compare_probe, probe_window};
pub use processes::WhereIoState;
pub use sort::{Hot, RowKey, SortKey, await_baseline, cmp_figures, cmp_rows, hot};

pub use super::dialogs::Overlay;
pub use super::status::{Status, StatusKind};

use super::command::Mode;
use super::dialogs::editor::NrLimit;
use super::dialogs::export::Focus;
pub use super::worker::protocol::ReplayPosition;
use super::worker::protocol::{Control, LiveControl};
use blktune_core::device::BlockDevice;
use blktune_core::export::UdevDb;
use blktune_core::history::{ChangeMark, Comparison, DeviceHistory, compare};
use blktune_core::host::HostInfo;
use blktune_core::iostat::ExtStats;
use blktune_core::natural::natural_cmp;
use blktune_core::sampler::DeviceStats;
use blktune_core::tuner::Wanted;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

pub use super::worker::protocol::KEEP_SECS;
/// Above this many devices with a size, only the selected and changed ones
/// keep a long history.
pub const FULL_HISTORY_DEVICES: usize = 64;
/// Points kept for the table's sparkline of other devices.
pub const SHORT_POINTS: f64 = 24.0;
/// Seconds before a change that the before/after table looks at, at most.
pub const BEFORE_WINDOW: f64 = 60.0;
/// The sample intervals `+` and `-` step through.
pub const INTERVALS_MS: [u64; 7] = [100, 250, 500, 1000, 2000, 5000, 10000];

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
    pub original: Wanted,
    /// The settings after the session's last change still in force.
    pub now: Wanted,
    pub labels: Vec<String>,
}

/// A device's I/Os in flight now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InFlightNow {
    /// diskstats' count (field 9): reads and writes together.
    pub total: u64,
    /// Reads and writes, where known (live; a replay has the total only).
    pub split: Option<blktune_core::diskstats::InFlight>,
}

impl InFlightNow {
    /// `3/1` (reads/writes), or the total alone where the split is unknown.
    pub fn label(&self) -> String {
        match self.split {
            Some(s) => format!("{}/{}", s.reads, s.writes),
            None => self.total.to_string(),
        }
    }
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
    /// Live `p`: the display is frozen while sampling goes on; what the
    /// worker sent meanwhile waits here and is taken in on resume, so the
    /// charts have no gap ([`App::resume`]).
    pub held: Option<std::collections::VecDeque<super::worker::protocol::Feed>>,
    pub devices: Arc<Vec<BlockDevice>>,
    /// Is `devices` in name order (as the sampler publishes it)? Made when
    /// the list changes ([`App::visible`] asks on every draw).
    pub devices_by_name: bool,
    /// The names of `devices` that have a size (the table's rows before
    /// the filter), made when the list changes.
    pub sized: HashSet<String>,
    pub histories: HashMap<String, DeviceHistory>,
    /// The newest snapshot's statistics, by name: what is in flight now
    /// ([`App::in_flight`]). Kept as the snapshot made it (no copy per
    /// device per tick); replaced by the next one.
    pub now_stats: DeviceStats,
    /// Every change seen, per device, oldest first.
    pub marks: HashMap<String, Vec<ChangeMark>>,
    /// Changes of this session not undone, per device, oldest first.
    pub undo: HashMap<String, Vec<ChangeMark>>,
    pub selected: Option<String>,
    selected_pos: usize,
    /// %util until `o`, `<`, `>` or F6 picks another ([`SortKey::default`]),
    /// and again when its column leaves the screen ([`App::on_columns`]).
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
    /// The system in each interval (CPU busy, iowait, PSI io): the
    /// controls of a before/after.
    pub system: SystemHistory,
    /// The system's I/O pressure (PSI) of the newest snapshot, where the
    /// kernel has it.
    pub pressure: Option<blktune_core::pressure::IoPressure>,
    pub samples: u64,
    /// Set by a replay source; shown in the header.
    pub replay: Option<ReplayPosition>,
    /// Rows of the device table on screen (page size for PgUp/PgDn); set
    /// by the event loop through [`App::on_resize`], never by drawing.
    page_rows: usize,
    /// Sort keys whose columns are on screen ([`App::on_columns`]); `None`
    /// until the event loop has said (every key then).
    columns: Option<Vec<SortKey>>,
    /// How far the help can scroll ([`App::on_help_size`]); unbounded until
    /// the event loop has said.
    help_max: usize,
    /// The rows on screen last told to the live worker ([`App::view_control_for`]).
    view_sent: Option<Vec<String>>,
    /// The file `R` records to, while it does.
    pub recording: Option<std::path::PathBuf>,
    /// Every file this session recorded to, in order (the quit summary
    /// names them all).
    pub recordings: Vec<std::path::PathBuf>,
    /// What decides where `R` records, when given (tests); `None`: read
    /// from the process when `R` is pressed.
    pub record_facts: Option<crate::tui::dialogs::record::Facts>,
    /// `blktune demo` and `replay --demo`: what the guided hint is about.
    pub demo: Option<demo::Demo>,
    /// The live A/B of a change (`A`), running or done.
    pub ab: Option<AbState>,
    /// The latency probe (`--probe`, `P`); `None` when it is off.
    pub probe: Option<ProbeState>,
    /// Reads per second of the probe when `P` turns it on.
    pub probe_rate: f64,
    /// The kernel's latency histograms (a replay feeds the recorded ones).
    pub latency: LatencyState,
    /// The processes panel (`i`) and each device's placement.
    pub where_io: WhereIoState,
    pub quit: bool,
    /// Where the export dialog reads udev properties (`None`: none, as in tests).
    pub udev_db: Option<UdevDb>,
    /// The kernel's tick rate from its configuration (`None`: unknown, as
    /// in tests; the devices' stored values then narrow it), for the
    /// defaults of jiffies-valued tunables an export leaves out.
    pub kernel_hz: Option<blktune_core::kernel_hz::KernelHz>,
    next_id: u64,
    /// `U`: answers still due, and the devices reverted and failed so far,
    /// so the status names every device, not the last answer.
    reverting: Option<RevertBatch>,
    want_select: Option<String>,
    /// Select the first row when one appears: true until a selection is
    /// made, so that a vanished device leaves nothing selected.
    auto_select: bool,
    /// Until the first rates or the first key: the automatic first
    /// selection (made while every row ties, so in name order) moves to the
    /// top row once rows sort by rates, so the screen opens on the busiest
    /// device. Never after a key (a dialog, or the user's own choice), nor
    /// when `--device` named one.
    top_pick: bool,
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
            devices_by_name: true,
            sized: HashSet::new(),
            histories: HashMap::new(),
            now_stats: DeviceStats::default(),
            marks: HashMap::new(),
            undo: HashMap::new(),
            selected: None,
            selected_pos: 0,
            sort: SortKey::default(),
            filter: String::new(),
            filter_typing: false,
            overlay: None,
            status: None,
            pending: 0,
            now: 0.0,
            iowait: None,
            system: SystemHistory::default(),
            pressure: None,
            samples: 0,
            replay: None,
            held: None,
            page_rows: 10,
            columns: None,
            help_max: usize::MAX,
            view_sent: None,
            recording: None,
            recordings: Vec::new(),
            record_facts: None,
            demo: None,
            ab: None,
            probe: None,
            probe_rate: blktune_core::probe::DEFAULT_RATE,
            latency: LatencyState::default(),
            where_io: WhereIoState::default(),
            quit: false,
            udev_db: None,
            kernel_hz: None,
            next_id: 1,
            reverting: None,
            top_pick: cfg.select.is_none(),
            want_select: cfg.select,
            auto_select: true,
            replaced: Vec::new(),
        }
    }

    /// The device table now shows `rows` rows: the page of PgUp and PgDn.
    pub fn on_resize(&mut self, rows: usize) {
        self.page_rows = rows.max(1);
    }

    /// The sort keys of the columns the table shows at the terminal's size;
    /// set by the event loop, as [`App::on_resize`]. A sort by a column the
    /// table no longer shows (the window was made narrower, or the p99
    /// columns came and took its room) would order the rows with nothing on
    /// screen to say by what: it goes back to the first sort (or the first
    /// column there is), and the status says why, unless it holds an error,
    /// which must stay until read.
    pub fn on_columns(&mut self, keys: Vec<SortKey>) {
        if !keys.is_empty() && !keys.contains(&self.sort) {
            let hidden = self.sort;
            self.sort = if keys.contains(&SortKey::default()) {
                SortKey::default()
            } else {
                keys[0]
            };
            if self
                .status
                .as_ref()
                .is_none_or(|st| st.kind != StatusKind::Error)
            {
                self.say(
                    StatusKind::Info,
                    format!(
                        "sorted by {}: the {} column is not on screen",
                        self.sort.label(),
                        hidden.label()
                    ),
                );
            }
        }
        self.columns = Some(keys);
    }

    /// The sort keys of the columns on screen, once the event loop said.
    pub fn columns(&self) -> Option<&[SortKey]> {
        self.columns.as_deref()
    }

    /// How far the help can scroll at the terminal's size; set by the event
    /// loop, as [`App::on_resize`].
    pub fn on_help_size(&mut self, max_scroll: usize) {
        self.help_max = max_scroll;
    }

    /// Which key bindings are in force.
    pub fn mode(&self) -> Mode {
        match &self.overlay {
            Some(Overlay::Picker(_) | Overlay::Tunables(_)) => Mode::List,
            Some(Overlay::Edit(_) | Overlay::RecordPath(_)) => Mode::Text,
            Some(Overlay::Help { .. }) => Mode::Help,
            Some(Overlay::Confirm { .. }) => Mode::Confirm,
            Some(Overlay::Export(d)) => match d.focus {
                Focus::Path { .. } => Mode::Text,
                Focus::Overwrite | Focus::Warnings => Mode::Confirm,
                Focus::Options | Focus::Writing => Mode::Export,
            },
            Some(Overlay::ShootOut(_)) => Mode::ShootOut,
            None if self.filter_typing => Mode::Text,
            None if self.replay.is_some() => Mode::Replay,
            None if self.ab.as_ref().is_some_and(AbState::running) => Mode::Ab,
            None => Mode::Main,
        }
    }

    /// Say what the machine lacks at start (no `/proc/diskstats` in a
    /// captured tree): an info on the status line.
    pub fn tell(&mut self, text: impl Into<String>) {
        self.say(StatusKind::Info, text);
    }

    fn say(&mut self, kind: StatusKind, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            kind,
            at: self.now,
        });
    }

    // ---- what the screen shows -------------------------------------------

    /// Is this device a row of the table (it is not known to be empty, is
    /// no hidden NVMe path, whose head is the row, and matches the filter)?
    pub fn is_shown(&self, d: &BlockDevice) -> bool {
        !d.is_empty()
            && !d.hidden
            && (self.filter.is_empty() || d.name.contains(&self.filter.to_lowercase()))
    }

    /// How many rows the table has (without sorting them).
    pub fn visible_count(&self) -> usize {
        self.devices.iter().filter(|d| self.is_shown(d)).count()
    }

    /// Devices in the table, filtered and sorted ([`cmp_rows`]).
    pub fn visible(&self) -> Vec<&BlockDevice> {
        // The statistics are looked up once per device, not per comparison.
        let mut v: Vec<(RowKey, &BlockDevice)> = self
            .devices
            .iter()
            .filter(|d| self.is_shown(d))
            .map(|d| (self.row_key(d), d))
            .collect();
        // The sampler lists devices in name order: then a stable sort by
        // the figures alone leaves ties in that order without comparing
        // names, which at a thousand idle devices (every row a tie) was
        // most of the sort.
        if self.devices_by_name {
            v.sort_by(|(a, _), (b, _)| cmp_figures(self.sort, a, b));
        } else {
            v.sort_by(|(a, _), (b, _)| cmp_rows(self.sort, a, b));
        }
        v.into_iter().map(|(_, d)| d).collect()
    }

    /// The message telling the live worker which rows a draw just showed
    /// ([`crate::tui::render::draw_rows`]; it checks their settings every
    /// period, the rest less often), when they changed since the last one;
    /// `None` in a replay. Called after every draw.
    pub fn view_control_for(&mut self, rows: Vec<String>) -> Option<Control> {
        if self.replay.is_some() || self.view_sent.as_ref() == Some(&rows) {
            return None;
        }
        self.view_sent = Some(rows.clone());
        Some(LiveControl::InView(rows).into())
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

    /// I/Os in flight now on a device: diskstats' count, split into reads
    /// and writes where the source read `/sys/block/X/inflight`; `None`
    /// when the newest snapshot has no line of it.
    pub fn in_flight(&self, name: &str) -> Option<InFlightNow> {
        self.now_stats.get(name).map(|st| InFlightNow {
            total: st.counters.in_flight,
            split: st.in_flight,
        })
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
                    now: stack.last()?.after.clone(),
                    labels: stack.iter().map(|m| m.label.clone()).collect(),
                })
            })
            .collect();
        v.sort_by(|a, b| natural_cmp(&a.device, &b.device));
        v
    }

    /// Is this device on the machine with a size (a detached loop device
    /// keeps its sysfs entry with size 0)?
    fn is_present(&self, name: &str) -> bool {
        !self.replaced.iter().any(|r| r == name)
            && self.devices.iter().any(|d| d.name == name && !d.is_empty())
    }

    /// How a device that is no longer there went.
    fn gone(&self, name: &str) -> &'static str {
        if self.replaced.iter().any(|r| r == name) {
            "was replaced by another device of that name (new diskseq)"
        } else {
            "vanished"
        }
    }

    /// Close a dialog whose device is no longer the selected one (it
    /// vanished, was replaced, or the selection moved), so that Enter cannot
    /// apply it to a device the user is not looking at; returns why and the dialog.
    fn close_overlay_of_other_device(&mut self) -> Option<(String, &'static str)> {
        let (dev, seq, what) = self.overlay.as_ref()?.device()?;
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

/// Names whose device in `new` is another one than in `old`: both have a
/// `diskseq` (kernel 5.15+, new on every attach and also on a loop
/// device's detach) and they differ, and the new one has a size (a
/// detached loop device is just vanished). Pure.
pub fn replaced_devices(old: &[BlockDevice], new: &[BlockDevice]) -> Vec<String> {
    new.iter()
        .filter(|n| !n.is_empty())
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
    fn intervals_read_as_typed() {
        assert_eq!(fmt_interval(Duration::from_millis(250)), "250ms");
        assert_eq!(fmt_interval(Duration::from_secs(2)), "2s");
        assert_eq!(fmt_interval(Duration::from_millis(1500)), "1500ms");
    }
}
